"""FACE: Fidelity Assessment based on Convergence and Extrapolation (Insam 2022, ch. 11-13).

A sweep degrades the transfer system step by step, runs one test per value, reduces every run to an error
measure ``e`` and a result ``q``, fits ``q = h(e)`` and extrapolates to ``e = 0``.  Modules: ``spec`` (sweep
file), ``measures`` (e, q, tau_FEI), ``fit`` (h and the FACE numbers), ``engine`` (runs a sweep with a given
``run_point``, re-analysis), ``execution`` (the point runners), ``preflight`` (every problem of a sweep before
its first point), ``plots``, ``outputs`` and ``cli``.
"""
from rths_ros.analysis.face.cli import main
from rths_ros.analysis.face.engine import open_cluster, reanalyse, run_sweep
from rths_ros.analysis.face.execution import ScenarioPointRunner, make_runner
from rths_ros.analysis.face.fit import FitResult, analyse, fit_h, tau_fei_summary
from rths_ros.analysis.face.measures import DELAY_PARAMETERS, e_value, q_value, tau_fei_pair
from rths_ros.analysis.face.outputs import write_outputs
from rths_ros.analysis.face.plots import plot_convergence, plot_tau_fei
from rths_ros.analysis.face.preflight import SweepNotRunnable, check_sweep, require_runnable
from rths_ros.analysis.face.spec import EMeasureSpec, FitSpec, QMeasureSpec, SweepSpec, load_sweep, sweep_from_data

__all__ = ["SweepSpec", "EMeasureSpec", "QMeasureSpec", "FitSpec", "load_sweep", "sweep_from_data",
           "DELAY_PARAMETERS", "e_value", "q_value", "tau_fei_pair", "FitResult", "analyse", "fit_h",
           "tau_fei_summary", "run_sweep", "reanalyse", "open_cluster", "ScenarioPointRunner",
           "make_runner", "plot_convergence", "plot_tau_fei", "write_outputs", "main",
           "check_sweep", "require_runnable", "SweepNotRunnable"]
