"""Helpers the tests share: real components (PostgreSQL, Ray, Chromium), worker
processes the crash and kill tests start, and test data builders."""
