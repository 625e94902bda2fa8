"""HTTP interface (aiohttp): routes, auth, JSON errors."""
