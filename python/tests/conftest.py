"""The plugin's own tests: run with the pytest of an environment where the wheel is
installed (`.ci/packaging` does), so they test the installed package and binary, not the
sources beside them. `pytester` runs the tests that must fail in a pytest of their own."""

pytest_plugins = ["pytester"]
