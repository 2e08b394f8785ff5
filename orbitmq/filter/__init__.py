"""Message filters evaluated by the broker: tag hash codes and SQL92 selectors."""
