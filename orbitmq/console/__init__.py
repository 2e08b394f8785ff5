"""The web console: JSON API and static pages over the admin API (`orbitmq console`)."""
