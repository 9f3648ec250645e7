try:
    from django.tasks import task
except ImportError:
    from django_tasks import task

from .models import Order


@task()
def ship(order_id: int) -> dict:
    order = Order.objects.get(id=order_id)
    order.state = "shipped"
    order.save()
    return {"shipped": order_id}


@task(queue_name="mail", priority=10)
def notify(order_id: int, *, channel: str = "email") -> str:
    return f"{channel}:{order_id}"


@task(takes_context=True)
def attempts(context, fail_first: bool) -> int:
    if fail_first and context.attempt == 1:
        raise ValueError("first attempt fails")
    return context.attempt


@task()
def broken() -> None:
    raise KeyError("always")


@task()
async def double(n: int) -> int:
    return n * 2
