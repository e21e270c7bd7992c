"""The command line every plan-driven test client shares: --host/--port,
a JSON plan on stdin, one JSON result on stdout."""
import argparse
import asyncio
import json
import sys


def plan_main(run, description):
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    plan = json.load(sys.stdin)
    print(json.dumps(asyncio.run(run(args, plan))))
