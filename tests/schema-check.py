#!/usr/bin/env python3
"""Validate the JSON outputs the test suite kept against docs/schema/.

usage: schema-check.py SCHEMA_DIR JSON_DIR
JSON_DIR holds NAME.json (what vigil printed) and NAME.args (its arguments, one a line), written
by the harness's test_parse_json(). Exit 0: all valid; 1: some are not (each named, with the
path of the first error); 77: skipped (python3-jsonschema missing: the reason is printed).
"""
import json
import os
import sys

try:
    import jsonschema
except ImportError:
    print("# SKIP json_outputs_match_schemas: python3-jsonschema is not installed "
          "(apt-get install python3-jsonschema; tests/setup-deps does)")
    sys.exit(77)


def schema_for(args):
    """The schema file (without .json) for a command line, or None when it prints no JSON."""
    if args and args[0].startswith("@"):
        return args[0][1:]  # kept by test_keep_json_as(): not a command's stdout
    words = [a for a in args if not a.startswith("-")]
    if not words:
        return None
    cmd = words[0]
    if cmd == "stress" and len(words) > 1 and words[1] == "storage":
        return "stress-storage"
    if cmd in ("check", "stress"):
        return "check"
    if cmd == "net":
        return "net-counters" if "--counters" in args else "check"
    if cmd == "diagnose" and len(words) > 1:
        return "diagnose-" + words[1]
    if cmd == "fabric" and len(words) > 1:
        if words[1] == "burnin":
            return "fabric-burnin-run" if len(words) > 2 and words[2] == "run" else "fabric-burnin-plan"
        return "fabric-" + words[1]
    if cmd == "sim":
        return "sim-model" if "--print-model" in args else "sim"
    if cmd == "fleet" and len(words) > 1 and words[1] in ("model", "lemons"):
        if words[1] == "model" and "--json" not in args:
            return "sim-model"  # the model itself, as vigil sim --failures reads it
        return "fleet-" + words[1]
    if cmd == "qualify" and "--compare-json" in args:
        i = args.index("--compare-json")
        if i + 1 < len(args) and args[i + 1] == "-":
            return "qualify-compare"  # the comparison alone on stdout
    if cmd == "qualify":
        return "qualify"  # --json -: the card
    if cmd in ("fleet", "report", "run", "stacks"):
        return cmd
    return None


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    sdir, jdir = sys.argv[1], sys.argv[2]
    validators = {}
    store = {}
    for name in sorted(os.listdir(sdir)):
        if name.endswith(".json"):
            with open(os.path.join(sdir, name), encoding="utf-8") as f:
                sch = json.load(f)
            store[sch["$id"]] = sch
    try:  # jsonschema 4.18 and later resolve "$ref" through a registry...
        from referencing import Registry, Resource
        registry = Registry().with_resources(
            [(i, Resource.from_contents(sch)) for i, sch in store.items()])

        def make(cls, sch):
            return cls(sch, registry=registry)
    except ImportError:  # ...Debian bookworm's 4.10 through a resolver
        def make(cls, sch):
            return cls(sch, resolver=jsonschema.RefResolver.from_schema(sch, store=store))
    bad = checked = 0
    counts = {}
    for name in sorted(os.listdir(jdir)):
        if not name.endswith(".json"):
            continue
        path = os.path.join(jdir, name)
        with open(path[:-5] + ".args", encoding="utf-8") as f:
            args = f.read().splitlines()
        which = schema_for(args)
        if which is None:
            print("not valid: %s (vigil %s): no schema names this command" % (name, " ".join(args)))
            bad += 1
            continue
        if which not in validators:
            spath = os.path.join(sdir, which + ".json")
            if not os.path.exists(spath):
                print("not valid: %s (vigil %s): no schema %s" % (name, " ".join(args), spath))
                bad += 1
                continue
            with open(spath, encoding="utf-8") as f:
                schema = json.load(f)
            cls = jsonschema.validators.validator_for(schema)
            cls.check_schema(schema)
            validators[which] = make(cls, schema)
        with open(path, encoding="utf-8", errors="replace") as f:
            doc = json.load(f)
        checked += 1
        counts[which] = counts.get(which, 0) + 1
        errs = sorted(validators[which].iter_errors(doc), key=lambda e: list(e.absolute_path))
        if errs:
            bad += 1
            e = errs[0]
            print("not valid: %s (vigil %s) against %s.json at /%s: %s" %
                  (name, " ".join(args), which, "/".join(str(p) for p in e.absolute_path),
                   e.message[:300]))
    print("# %d JSON outputs checked against %d schemas (%s), %d not valid" %
          (checked, len(validators), ", ".join("%s %d" % kv for kv in sorted(counts.items())), bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
