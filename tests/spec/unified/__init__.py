"""A runner of the MongoDB unified test format against the simulated deployment.

Modules (inputs and outputs in each docstring):

* :mod:`.driver` -- the client under test as one swappable :class:`~.driver.Driver` object
  (PyMongo or ours; ``$MONGO_SANSIO_UNIFIED_DRIVER``);
* :mod:`.requirements` -- runOnRequirements against the :class:`~.requirements.Deployment`;
* :mod:`.entities` -- the entity map and createEntities;
* :mod:`.operations` -- entity operations on the client's PyMongo-shaped API;
* :mod:`.runner_ops` -- the special ``testRunner`` operations;
* :mod:`.events` -- event and log observation and event matching;
* :mod:`.matching` -- the format's matching rules and ``$$`` operators;
* :mod:`.runner` -- one test: :class:`~.runner.TestRunner`;
* :mod:`.known_gaps` -- our client's known gaps by reason (xfail, one switch);
* :mod:`.suite` -- cases, deployments and :func:`~.suite.run_case` for the thin test modules.
"""

from .driver import DRIVER_ENV, Driver, pymongo_driver, sansio_driver, selected_driver
from .matching import Matcher, UnsupportedInTest
from .requirements import Deployment, requirements_reason
from .runner import TestRunner
from .suite import DeploymentPool, SharedSimulators, run_case, unified_cases

__all__ = [
    "DRIVER_ENV",
    "Deployment",
    "DeploymentPool",
    "Driver",
    "Matcher",
    "SharedSimulators",
    "TestRunner",
    "UnsupportedInTest",
    "pymongo_driver",
    "requirements_reason",
    "run_case",
    "sansio_driver",
    "selected_driver",
    "unified_cases",
]
