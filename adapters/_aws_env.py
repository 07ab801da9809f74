"""What MONGODB-AWS needs from the process, gathered by the adapter for the pure core.

:func:`aws_environment` is called at each authentication (the spec wants the environment read
dynamically: another part of the program may refresh the credentials): the ``AWS_*`` variables
the core's credential sources read (:data:`~mongo_sansio.auth.aws_credentials.ENVIRONMENT_VARIABLES`),
the wall-clock time SigV4 signs with, and a reader for the web identity token file.
"""

from __future__ import annotations

import os
import time

from mongo_sansio.auth.aws_credentials import ENVIRONMENT_VARIABLES, AwsEnvironment

__all__ = ["aws_environment"]


def _read_text(path: str) -> str:
    with open(path, encoding="utf-8") as file:
        return file.read()


def aws_environment() -> AwsEnvironment:
    environ = os.environ
    variables = {name: environ[name] for name in ENVIRONMENT_VARIABLES if name in environ}
    return AwsEnvironment(variables=variables, wall_time=time.time(), read_file=_read_text)
