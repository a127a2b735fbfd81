"""Settings of the Celery workers (celery -A dagster_celery.app worker), read by dagster_celery.make_app.

dagster_celery imports a module of this name when it is on the worker's PYTHONPATH (scripts/cluster/up.sh
puts deploy/celery there). The run launcher in deploy/dagster.yaml names the same broker and backend.
"""

import os

broker_url = os.environ["UD_CELERY_BROKER"]
result_backend = os.environ["UD_CELERY_BACKEND"]
# One run at a time per worker process, and none reserved ahead: a free worker takes the next run.
# A task is acknowledged when it ends (acks_late), so a busy worker holds no second run in reserve
# while another worker is idle. A worker process killed mid-run fails its task (WorkerLostError is
# not requeued): run monitoring fails the run and run_retries submits it again (deploy/dagster.yaml).
worker_prefetch_multiplier = 1
task_acks_late = True
task_reject_on_worker_lost = False
# Redis hands an unacknowledged task to another worker after this long: longer than any run.
broker_transport_options = {"visibility_timeout": 24 * 3600}
# The result records which worker ran the task (CeleryRunLauncher's debug info shows it).
result_extended = True
# A worker that lost its broker connection reconnects instead of exiting.
broker_connection_retry_on_startup = True
