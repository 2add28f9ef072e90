"""What every live backend shares, whatever its batch system (the protocols are in :mod:`rlsched.core.live`).

- :mod:`.runner`: running commands with argument lists, timeouts, retries with backoff, error counters
  (``CommandResult``, ``SubprocessRunner``, ``RetryPolicy``, ``CommandExecutor``, ``BackendError``);
- :mod:`.hostlist`: hostlist expansion (``cloud[1-4]``);
- :mod:`.classify`: the class rule (``ClassRule``) and the account → VO mapping (``VOMapping``).

The leasing controller's provider client uses the runner too.
"""
