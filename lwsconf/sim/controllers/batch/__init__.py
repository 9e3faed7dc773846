"""batch/v1 controllers: `job` over the pure `job_sync` (and `job_indexes` for Indexed Jobs), and `cronjob`.

May import `scheduler`, `endpoints` and `common`; no other controller.
"""
