import os
import sys

import prsd_srconly_demo


def init():
    global VERSION
    VERSION = "%d.%d" % sys.version_info[:2]


def run(mini_batch):
    built = prsd_srconly_demo.BUILT_ON
    return ["%s %s %s" % (VERSION, built, os.path.basename(p)) for p in mini_batch]
