"""Scheduled agent jobs (requirement T-CRON): schedules, the scheduler, the job runner and ``cronjob_manage``.

* :mod:`~hermes.tools.cron.schedule` — cron expressions, intervals and one-shot times;
* :mod:`~hermes.tools.cron.jobs` — validating and changing jobs (shared by the tool and the CLI);
* :mod:`~hermes.tools.cron.scheduler` — one tick: due jobs, the missed-run policy, run records;
* :mod:`~hermes.tools.cron.runner` — one run: a fresh agent session on the cron surface;
* :mod:`~hermes.tools.cron.tool` — the ``cronjob_manage`` tool (toolset ``cronjob``).

Jobs and runs are stored in ``state.db`` by :class:`hermes.store.cron.CronStore`.
"""

#: limits shared by the tool's schema and the argument checks (kept here so the tool module imports fast)
MAX_PROMPT = 20_000
MAX_SKILLS = 20
MAX_TOOLSETS = 50
MAX_GRACE_SECONDS = 366 * 86400
