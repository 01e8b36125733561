"""Tests of the FaaS emulator (a package, so its conftest does not collide with others)."""
