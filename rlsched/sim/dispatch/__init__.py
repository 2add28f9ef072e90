"""Proactive dispatch to heterogeneous processing units (Tong et al., 2014; docs/tong.md).

A small event simulation of its own (it does not use the EASY engine): ``n`` units, each a
FCFS queue with a service rate per task type, fed by a single dispatcher.

- :mod:`.model`: flows, units, the event loop and per-task results;
- :mod:`.policies`: Q-learning (the decision core's dispatcher), ECT, random, the queueing
  optimiser's probabilistic dispatch, and the batch heuristics Min-Min, Max-Min, Suffrage;
- :mod:`.queueing`: the M/M/1 model of Eqs. 8–11 and its optimiser (SciPy SLSQP);
- :mod:`.workloads`: the Table 3 setting, arrival laws, estimation errors, the LPC setting
  and the LPC-EGEE replay;
- :mod:`.compare`: all policies on one flow with common random numbers.
"""

from rlsched.sim.dispatch.model import Flow, RunResult, SchedulerCost, Units, simulate

__all__ = ["Flow", "RunResult", "SchedulerCost", "Units", "simulate"]
