"""Runs that tie the layers together: scan, check, summarise, one file or module at a time.

    inspect.py         scan + module checks per file; the inspect JSON document
    dump_summary.py    a dump directory folded into one report (per distinct layout/mesh/finding)
    dump_diff.py       two dumps compared value by value
    comms_checks.py    the collective checks (MD201-MD203) over a scanned file
    spool.py           ordered output of worker processes

Every run makes one `memo.RunMemos` and passes it down (one per worker process).
"""
