"""Widgets of the monitor. They only render what they are given; none reads the database."""
