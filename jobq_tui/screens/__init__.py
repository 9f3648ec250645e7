"""Screens over the main view, one per module: job detail, help, confirmation."""
from .confirm import ConfirmScreen
from .detail import DetailScreen, detail_text
from .help import HelpScreen

__all__ = ["ConfirmScreen", "DetailScreen", "HelpScreen", "detail_text"]
