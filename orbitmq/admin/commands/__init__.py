"""The mqadmin commands, one module per subject; `orbitmq.admin.cli` collects their COMMANDS."""
