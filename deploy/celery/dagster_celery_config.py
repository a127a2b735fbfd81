"""Settings of the Celery workers (celery -A dagster_celery.app worker), read by dagster_celery.make_app.

dagster_celery imports a module of this name when it is on the worker's PYTHONPATH (scripts/cluster/up.sh
puts deploy/celery there). The run launcher in deploy/dagster.yaml names the same broker and backend.
"""

import os

broker_url = os.environ["UD_CELERY_BROKER"]
result_backend = os.environ["UD_CELERY_BACKEND"]
# One run at a time per worker process, and none reserved ahead: a free worker takes the next run.
worker_prefetch_multiplier = 1
# The result records which worker ran the task (CeleryRunLauncher's debug info shows it).
result_extended = True
# A worker that lost its broker connection reconnects instead of exiting.
broker_connection_retry_on_startup = True
