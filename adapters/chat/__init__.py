"""Chat channels: the ask flow written once, and Slack and Discord as wire translation."""
