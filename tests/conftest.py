import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
# a first call compiles in the call (tests assert on compiled programs and compile counts);
# tests/test_compile_background.py switches the compile worker on where it tests it
os.environ["JITORCH_COMPILE"] = "sync"
