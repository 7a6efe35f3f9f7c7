"""The load scripts' harness: everything two of them would otherwise write twice.

Standard library only, and every byte of traffic to 127.0.0.1. A script in a folder of
`load-scripts/` imports it after putting `load-scripts/` on its path; a shell script calls it
as `python3 -m harness COMMAND` (see `__main__.py`) with `load-scripts/` as PYTHONPATH.

    tools       the missing-tool check: a failure in CI (FAULTLINE_REQUIRE_TOOLS=1), a skip
                elsewhere
    procs       free ports, server processes: started, waited for, stopped by their PID
    script      the frame of a script in Python: tools checked, a scratch directory, servers
                stopped by their PIDs however it ends, `passed in` or why it failed
    client      a keep-alive client for 127.0.0.1 only, and the label of an answer
    signing     the signatures and headers of every sender the scripts sign for
    ingest      the webhook-ingest service: its build ($CI_PROFILE), its start, an instance and
                its inboxes (also as the scenario scripts' environment file), push bodies
    lab         the failure lab's servers
    standin     what the stand-in providers share: their API's server, a hook's targets, the
                redeliveries asked for
    github      a stand-in GitHub: a hook that sends pushes, and the deliveries API catch-up
                calls
    gitlab      a stand-in GitLab: a project's hook that sends pushes, and the hook events API
                catch-up calls (test_gitlab.py checks it against what GitLab publishes)
    postgres    a throwaway PostgreSQL server
    prometheus  a Prometheus scraping some targets, and its query API
    nginx       nginx in front of one upstream
    metrics     /metrics parsed, and the reconciliation of `started` with the outcomes
    storm       parallel clients that prove they ran at once and check their own totals
"""
