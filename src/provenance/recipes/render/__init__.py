"""Render a selection to argv and env, as the recipes builder does."""
