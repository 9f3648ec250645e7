"""A chain's or group's links never reach a job outside the workflow: an item that would be
linked cannot carry a unique_key, since a held key gives back the holder's id (which the
links would then make wait, or wait on itself). Refused before anything is written."""
from __future__ import annotations

import pytest

from jobq_core import JobStatus


def test_a_chain_item_with_a_held_unique_key_is_refused_and_the_holder_stays_pending(queue):
    holder = queue.enqueue("unrelated", unique_key="k")
    with pytest.raises(ValueError, match="unique_key.*nothing was written"):
        queue.chain([("first",), {"kind": "second", "unique_key": "k"}])
    assert queue.get(holder).status == JobStatus.PENDING
    assert queue.dependencies(holder).waits_on == ()
    assert queue.count() == 1


def test_two_chain_items_with_one_unique_key_cannot_make_a_job_wait_on_itself(queue):
    with pytest.raises(ValueError, match="item 0 of a chain or group"):
        queue.chain([{"kind": "a", "unique_key": "same"}, {"kind": "b", "unique_key": "same"}])
    assert queue.count() == 0


def test_a_group_callback_or_member_with_a_unique_key_is_refused(queue):
    with pytest.raises(ValueError, match="item 1 of a chain or group"):
        queue.group([("member",)], then={"kind": "callback", "unique_key": "k"})
    with pytest.raises(ValueError, match="item 0 of a chain or group"):
        queue.group([{"kind": "member", "unique_key": "k"}], then=("callback",))
    assert queue.count() == 0


def test_unlinked_items_keep_their_unique_keys(queue):
    first = queue.enqueue("a", unique_key="k")
    ids = queue.enqueue_many([{"kind": "a", "unique_key": "k"},
                              {"kind": "b", "after": [first]}])
    assert ids[0] == first  # the key is held: its holder's id, as enqueue gives
    assert queue.chain([{"kind": "alone", "unique_key": "solo"}]) == [
        queue.enqueue("alone", unique_key="solo")]
