"""Rules, one folder per family and one file per rule (`rules/<family>/<rule_name>.py`);
installed as `mxlint.rules`. `mxlint.registry` finds them."""
