"""Shared fixtures: run the `rths` runner in-process against the installed messages."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# the tests mirror the package tree (test/core/..., test/app, test/analysis, ...; node-graph runs in test/graph);
# their shared helpers (graph_equivalence.py) live here
sys.path.insert(0, str(Path(__file__).resolve().parent))

# pytest rewrites the asserts of every test module it imports (an AST pass over ~300 modules: about 6 s of CPU) and
# keeps the result beside the module's bytecode, unless writing bytecode is off (PYTHONDONTWRITEBYTECODE, set on
# some CI machines): then every pytest process, each xdist worker of each tier, rewrote every module again.  Only
# this process writes it; the processes the tests start keep the environment's setting.
sys.dont_write_bytecode = False

# hypothesis: the suite draws the same examples in every run (profile "ci", derandomized), so a red run means a
# change, not an unlucky draw; HYPOTHESIS_PROFILE=explore draws new examples each run, to hunt for counterexamples
# (a counterexample found so goes into the test as an @example; docs/building.md "Test tiers")
from hypothesis import settings as _hypothesis_settings

_hypothesis_settings.register_profile("ci", derandomize=True)
_hypothesis_settings.register_profile("explore", derandomize=False)
_hypothesis_settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def rths(*args: str, timeout: float = 600, check: bool = False, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run the `rths` command line (same interpreter) and capture its output."""
    e = dict(os.environ)
    e.update(env or {})
    proc = subprocess.run([sys.executable, "-m", "rths_ros.cli", *args], capture_output=True, text=True,
                          timeout=timeout, env=e, cwd=str(ROOT), stdin=subprocess.DEVNULL)
    if check and proc.returncode != 0:
        raise AssertionError(f"rths {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


@pytest.fixture
def rths_cli():
    return rths


def rths_in_process(*args: str) -> subprocess.CompletedProcess:
    """The `rths` command line called in this process (``rths_ros.cli.main``), its output captured: the same exit
    code and output as :func:`rths` for a verb that starts no ROS graph (``analyze``), without the 3 s of imports
    of a new interpreter."""
    import contextlib
    import io

    from rths_ros import cli
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(list(args))
    return subprocess.CompletedProcess(["rths", *args], code, out.getvalue(), err.getvalue())


@pytest.fixture
def rths_local():
    return rths_in_process


# -- tiers ------------------------------------------------------------------------------------------------------
# graph:  the test starts a ROS graph (node processes, a composed process, nodes on DDS in the test process) or
#         `ros2 launch`: everything under test/graph and test/launch, and the modules of GRAPH_MODULES.
# launch: the test runs `ros2 launch` (everything under test/launch).
# serial: the test measures time or runs in realtime (deadlines, watchdogs of a fraction of a second, signals
#         after a sleep): it runs alone, after the rest (SERIAL: a module, or the named tests of a module).
# slow:   a unit test that takes long on a 2-core machine (SLOW); `make test-quick` leaves it out.
# `make test` runs everything not serial on every core (pytest-xdist, one module per worker: a lockstep run is
# deterministic whatever the load), then the serial tests one at a time; `make test-quick` runs what is neither
# graph nor slow nor serial on every core.
GRAPH_MODULES = {
    "analysis/test_compare_twin.py", "analysis/test_face_graph_backend.py", "analysis/test_face_rig.py",
    "analysis/test_damaged_bags.py", "analysis/test_face_workers_after_ros.py",
    "analysis/test_qualify_ros2_control.py", "runtime/test_forked.py",
    "runtime/test_teardown_watchdog.py", "runtime/test_release_dds.py", "test_colcon_build.py",
}
# model_graph: a graph module that runs one model after another through the same ROS path as the others (a model's
#         numbers against its in-process run); `make test` runs it on the first ROS 2 distribution only, `make
#         test-all` on both (scripts/run_tests.sh graph-launch / graph-launch-all)
MODEL_GRAPH_MODULES = {
    "graph/test_methods_graph.py", "graph/test_harmonic_aff_graph.py", "graph/test_gait_graph.py",
    "graph/test_benchmark_graph.py", "graph/test_damper_rig_graph.py", "graph/test_lab_example_graph.py",
    "graph/test_model_fe_beam.py", "graph/test_added_delay_graph.py", "analysis/test_face_graph_backend.py",
}
ALL = None          # every test of the module
SERIAL = {
    "analysis/test_compare_twin.py": ALL,
    "analysis/test_face_rig.py": {"test_a_short_realtime_face_sweep_on_the_emulated_ros2_control_rig_gives_a_verdict"},
    "analysis/test_qualify_ros2_control.py": ALL,
    "graph/test_bringup_graph.py": {"test_a_rig_that_reports_the_stroke_is_stopped_before_start_and_never_commanded",
                                    "test_a_wrong_joint_name_ends_the_run_on_the_plants_own_message"},
    "graph/test_commission.py": {"test_rths_commission_passes_a_correct_rig_and_writes_its_record",
                                 "test_each_wiring_fault_of_the_emulated_rig_is_found_and_named",
                                 "test_a_rig_reporting_the_stroke_is_refused_before_anything_moves_and_passes_once_mapped",
                                 "test_the_twin_in_process_and_the_platform_link_pass_too"},
    "graph/test_controllers_graph.py": {"test_realtime_composed_ilc_series_learns"},
    "graph/test_foreign_publisher.py": ALL,
    "graph/test_identify_ros2_control.py": {
        "test_identification_over_ros2_control_and_from_its_bag_recovers_the_legs_within_5_percent",
        "test_an_excitation_faster_than_the_legs_and_excitation_options_on_a_bag_are_refused"},
    # the emulators' threads (a Net F/T stream at 1 kHz, the controller's link) in the plant's process: starved at
    # idle priority beside the serial tier, its first attempt failed in two clean-clone runs of 2026-11-30 (a late
    # F/T record; the plant process ended by SIGKILL at the trial boundary, cause not found), both passed on rerun
    "graph/test_hardware_gait.py": {"test_rig_is_ramped_to_the_start_pose_before_ready_and_at_the_next_trial",
                                    "test_hardware_stride_reproduces_the_simulated_plant"},
    # the same emulators behind the platform link: at idle priority its ramp to the safe pose outlasted the
    # recorder's wait for SAFE in a clean-clone run of 2026-11-30 (no SAFE in the record; passed on rerun)
    "graph/test_hardware_plant.py": {"test_abort_elsewhere_ramps_the_rig_to_its_safe_pose_over_the_link"},
    "graph/test_interrupt.py": ALL,
    "graph/test_lifecycle.py": ALL,
    "graph/test_linear_motor_graph.py": {"test_interface_gap_learner_keeps_up_in_realtime"},
    "graph/test_live_clients.py": ALL,
    "graph/test_live_tuning.py": ALL,
    "graph/test_live_view.py": ALL,
    "graph/test_recorder_backpressure.py": ALL,
    "graph/test_runtime_graph.py": {"test_killed_node_fails_the_run_fast_and_leaves_no_orphans", "test_ctrl_c_stops_every_node",
                                    "test_realtime_smoke_reports_loop_statistics",
                                    "test_emergency_stop_topic_aborts_the_run"},
    "graph/test_safety.py": {"test_process_watch_reports_an_ended_node_process_of_the_run",
                             "test_killed_numerical_node_is_seen_by_the_process_watch_and_the_platform_goes_safe",
                             "test_killed_plant_is_named_and_the_others_stop_on_the_watchdog",
                             "test_lost_force_message_in_lockstep_stalls_the_loop_and_the_watchdog_aborts",
                             "test_realtime_tolerates_ten_percent_lost_force_messages_and_counts_them",
                             "test_realtime_delay_spikes_are_counted_not_fatal_and_the_run_stays_on_track",
                             "test_killed_recorder_leaves_a_readable_bag_up_to_the_last_flushed_chunk",
                             "test_estop_service_aborts_and_the_platform_goes_safe"},
    "graph/test_shaker_pair_graph.py": {"test_the_two_dof_learner_keeps_up_in_realtime"},
    "graph/test_standard_interfaces.py": {"test_a_run_publishes_its_force_and_legs_in_standard_messages",
                                          "test_contact_1d_runs_stable_through_a_ros2_control_rig",
                                          "test_an_abort_ramps_a_ros2_control_rig_to_the_safe_pose",
                                          "test_the_plant_maps_the_broadcasters_joints_by_name_and_names_a_missing_one",
                                          "test_each_later_trial_starts_after_the_ramp_back_to_the_start_pose"},
    "graph/test_stop_ordering.py": ALL,
    # a UDP link to the emulated controller, whose watchdog trips when the test is starved (it ran at idle
    # priority beside the serial tier once and failed twice)
    "core/sysid/test_core_sysid.py": {"test_identification_over_the_platform_link_equals_the_in_process_rig"},
    # UDP at 1-4 kHz from the emulated sensor: starved at idle priority beside the graph tier, the socket's buffer
    # overflows and the kernel drops packets the test counts as the emulator's (a rerun in CI once)
    "drivers/test_drivers_ati_netft.py": {"test_lost_and_out_of_order_counts_match_the_emulated_faults"},
    "graph/test_stress.py": ALL,
    "graph/test_two_hosts.py": {"test_realtime_over_a_delayed_link_completes_and_reports_the_added_latency",
                                "test_realtime_over_a_link_losing_two_percent_rides_through_and_counts_the_gaps",
                                "test_a_cut_link_aborts_both_hosts_to_the_safe_pose_naming_the_link"},
    "graph/test_watchdog.py": ALL,
    # SCHED_FIFO busy loops and a periodic chain: they would take the CPU from a realtime serial test
    "test_bench_floor.py": ALL,
    "runtime/test_rt.py": {"test_a_fifo_process_pinned_to_one_cpu_builds_the_plant_whose_blas_threads_hung_it"},
    "launch/test_launch_realtime_composed.py": ALL,
    "launch/test_launch_ros2_control.py": ALL,
    "launch/test_launch_start_failure.py": ALL,
    "launch/test_ros2_cli.py": ALL,
    "runtime/test_forked.py": ALL,
    "runtime/test_teardown_watchdog.py": ALL,
}
# extended: long runs whose kind CI already covers with a shorter or sibling test (a scenario family's full-length
# run through separate processes, a second `ros2 launch` of a family, the colcon build): `make test` leaves them out
# to stay within CI's time on a 2-core machine, `make test-all` runs them too (docs/building.md "Test tiers").
EXTENDED = {
    "launch/test_launch_benchmark_building.py": ALL,
    "launch/test_launch_compensation.py": ALL,
    "launch/test_launch_coupled_beams.py": ALL,
    "launch/test_launch_cubic_spring.py": ALL,
    "launch/test_launch_cubic_spring_aff.py": ALL,
    "launch/test_launch_dubois_damper.py": ALL,
    "launch/test_launch_fe_beam.py": ALL,
    # the gait family and the hardware plant through `ros2 launch` in lockstep: their graph runs (test/graph) and the
    # hardware plant's realtime launch (test_launch_start_failure.py) stay in CI; contact_1d's launch is the
    # lockstep launch == `rths run` check of CI
    "launch/test_launch_gait_vpp.py": ALL,
    "launch/test_launch_hardware.py": ALL,
    # a killed node under the launch: the graph tests kill each node kind through `rths run` (test_safety.py, the
    # killed recorder's bag recovery included); a rig aborting under the launch and the launch's failure path are in
    # test_launch_two_rigs.py; Ctrl-C of the launch stays
    "launch/test_launch_fault.py": {"test_killed_node_ends_the_launch_non_zero_naming_it"},
    # every controller through separate processes stays in CI; the composed run of the same is a second transport
    "graph/test_controllers_graph.py": {"test_all_controllers_in_the_graph_reproduce_the_virtual_run[composed-local-bus]"},
    # the realtime two-DoF learner needs a machine that keeps up with most of its 1 kHz steps: on a slow 2-core
    # machine it catches about one step in eight and has not adapted after the 1 s run
    "graph/test_shaker_pair_graph.py": {"test_coupled_beams_through_the_graph_reproduce_the_virtual_run_and_synchronise",
                                        "test_the_two_dof_learner_keeps_up_in_realtime"},
    "graph/test_linear_motor_graph.py": {"test_harmonic_aff_on_the_linear_motor_through_the_graph"},
    "graph/test_benchmark_graph.py": {"test_a_users_controller_runs_in_the_graph", "test_two_identical_graph_runs_give_identical_j"},
    "graph/test_gait_graph.py": {"test_reproducibility_over_three_noise_seeds",
                                 # a second gait configuration through the graph: the default one stays in CI
                                 "test_thesis_configuration_scenario_through_the_graph_reproduces_the_virtual_run"},
    # the lab package through `ros2 launch`: its scenarios' graph runs stay in CI, and so does the lockstep launch of
    # contact_1d
    "launch/test_launch_lab_example.py": ALL,
    # the lab package's own family (voice coil) through separate processes stays in CI; composed is a second
    # transport, and its 2-DoF chain is a model of the interface_1d family, whose graph path contact_1d covers
    "graph/test_lab_example_graph.py": {
        "test_the_lab_scenarios_through_the_graph_equal_the_virtual_run[lab_voice_coil-composed]",
        "test_the_lab_scenarios_through_the_graph_equal_the_virtual_run[lab_two_mass_contact-composed]",
        "test_the_lab_scenarios_through_the_graph_equal_the_virtual_run[lab_two_mass_contact-processes]"},
    "test_colcon_build.py": ALL,
}
SLOW = {
    "analysis/test_compare.py": ALL,
    "analysis/test_dubois.py": ALL,
    "analysis/test_face_cli.py": ALL,
    "analysis/test_face_thesis_gaps.py": ALL,
    "analysis/test_qualify_cli.py": ALL,
    "analysis/test_stability_cli.py": ALL,
    "analysis/test_bartl_rigs.py": ALL,
    "app/test_hostile_scenarios.py": {"test_every_generated_value_is_invalid_by_the_schema"},
    "core/numerics/test_core_independent_integration.py": ALL,
    "core/models/gait/test_gait_kernels.py": ALL,
    "core/models/building/test_core_building_newmark.py": ALL,
    "test_cli.py": ALL,
    "test_geometry_cli.py": ALL,
    "test_bench_summary.py": {"test_quick_summary_of_the_in_process_rows"},
    # the unit tests that took 1.8 s or more each on a 2-core machine (make test-quick within 90 s; CI runs them)
    "analysis/test_analysis_face.py": {
        "test_face_12_1_4_magnitude",
        "test_face_table_12_1",
        "test_tau_fei_against_tau_add_from_the_shipped_sweep",
    },
    "analysis/test_analysis_gait.py": {"test_figures_and_animation"},
    "analysis/test_analysis_metrics.py": {"test_plots_and_report"},
    "analysis/test_benchmark_cli.py": {"test_perturbed_runs_with_a_user_controller"},
    "analysis/test_harmonic_learning.py": {"test_fxlms_transient_cli_writes_table_and_plot"},
    "app/test_controllers_rths.py": {
        "test_ilc_fq12_diverges_at_about_5_hz_and_is_stopped",
        "test_ilc_fq2_converges",
        "test_ilc_with_npc_floor_prevents_normalisation_spikes",
        "test_ilc_with_npc_is_stable_and_learns",
        "test_npc_stabilises_d50_feedback_only_and_gp_sweep_trends",
    },
    "app/test_runtime_params.py": {
        "test_cli_refuses_bad_scenario_with_clear_message",
        "test_node_process_refuses_to_start_on_bad_value",
    },
    "core/learning/test_core_aff.py": {
        "test_rths_a_fir_fitted_to_the_flight_phase_tracks_the_switch_below_0p1_mm_which_nlms_cannot_learn_in_time",
    },
    "core/methods/test_core_coupling.py": {
        "test_delayed_model_inverse_with_forward_prediction_on_a_delayed_transfer_system",
    },
    "core/methods/test_core_linear_vrths.py": {"test_tau_fei_adapted_grows_one_to_one_with_tau_add"},
    "core/methods/test_core_passivity.py": {"test_loop_without_damping_is_the_virtual_run"},
    "core/methods/test_fxlms_transient.py": {"test_filter_length_sets_the_synchronisation"},
    "core/models/bartl/test_beam_estimation.py": {"test_kalman_tracks_the_interface_force_at_the_default_q_and_r"},
    "core/models/bartl/test_coupled_beams_scenario.py": {
        "test_lms_01_at_320_hz_runs_away_and_aborts_while_rls_synchronises",
        "test_the_default_scenario_synchronises_both_actuator_points",
    },
    "core/models/contact1d/test_core_independent_contact1d.py": {
        "test_independent_integration_tracks_the_reference_better_than_explicit_euler",
    },
    "core/models/dubois/test_dubois_scenario.py": {
        "test_every_controller_improves_on_the_pid_alone_and_the_delayed_ones_most",
    },
    "core/platform/test_interface_kernels.py": {"test_se3_product_and_motion_action_equal_pinocchio"},
    "core/sysid/test_core_qualification.py": {"test_fit_on_stepped_sine_estimate"},
    "core/sysid/test_core_sysid.py": {"test_sysid_recovers_table_4_1_within_5_percent"},
    "test_launch_support.py": {"test_show_args_lists_every_argument_with_its_description"},
}
# the unit tests that used 1.0 s of CPU or more each (scripts/test_cpu_report.py on a CPU log of the suite):
# make test-quick within 90 s on a 2-core machine; CI runs them
SLOW_BY_CPU = {
    "analysis/test_run_status.py": ALL,
    "runtime/test_precompile.py": ALL,
    "analysis/test_analysis_face.py": {
        "test_cli_entry_runs_and_reanalyses_a_linear_sweep",
        "test_scenario_runner_vrths_backend",
        "test_sweep_parallel_run_filtering_outputs_and_reanalysis",
    },
    "analysis/test_interface_estimation_cli.py": {
        "test_interface_estimation_writes_json_and_plot",
    },
    "app/test_live_params.py": {
        "test_a_taken_port_is_refused_before_anything_starts",
        "test_run_with_a_bad_live_value_exits_2_naming_it",
    },
    "core/learning/test_core_aff.py": {
        "test_rths_aff_tracks_better_and_a_tenfold_smaller_gain_leaves_larger_errors",
        "test_rths_modified_fxlms_is_stable_at_table_a5_and_a_tenfold_smaller_gain_leaves_larger_errors",
    },
    "core/learning/test_core_harmonic_aff.py": {
        "test_lms_identification_error_form_and_lms_adaptation_converge",
        "test_rls_converges_faster_than_lms",
        "test_sequential_rls_keeps_the_identification_error",
    },
    "core/learning/test_core_ilc.py": {
        "test_position_injection_equals_velocity_injection_in_closed_loop",
    },
    "core/methods/test_core_coupling.py": {
        "test_prediction_and_tdc_reduce_the_tracking_error_of_the_contact_test",
    },
    "core/methods/test_core_linear_vrths.py": {
        "test_slow_first_order_actuator_lowers_the_spring_frequency",
    },
    "core/methods/test_core_tdc.py": {
        "test_fit_recovers_parameters_from_synthetic_frf",
    },
    "core/methods/test_npc_paper.py": {
        "test_gp_hardly_changes_the_stable_system",
        "test_gp_energy_error_crosses_zero_near_2800",
        "test_gp_fidelity_optimum_near_2800",
    },
    "core/models/bartl/test_beam_estimation.py": {
        "test_cli_beams_writes_json_table_and_plot",
    },
    "core/models/bartl/test_coupled_beams_scenario.py": {
        "test_the_objects_load_their_compiled_steps_when_built",
    },
    "core/models/bartl/test_cubic_spring_scenario.py": {
        "test_pbc_with_aff_removes_the_offset_and_the_phase_error",
        "test_supervisor_stabilises_the_lms_that_runs_away_alone",
    },
    "core/models/building/test_core_building.py": {
        "test_capacity_exceeded_aborts",
        "test_user_controller_drops_in",
    },
    "core/models/contact1d/test_core_contact1d.py": {
        "test_reference_solution_matches_sticking_unilateral_spring",
    },
    "core/models/contact1d/test_core_newmark_contact1d.py": {
        "test_matches_the_dormand_prince_model",
        "test_selectable_in_the_loop_with_the_same_result_as_contact_1d",
    },
    "core/models/dubois/test_core_dubois_models.py": {
        "test_modal_rk4_with_maxwell_damper_matches_eq24",
    },
    "core/models/dubois/test_dubois_scenario.py": {
        "test_without_cancellation_the_measures_are_the_rig_studys_test_point",
    },
    "core/models/fe/test_core_fe_beam_model.py": {
        "test_static_tip_stiffness_is_3EI_over_L3",
    },
    "core/numerics/test_core_newmark.py": {
        "test_feedforward_coupling_with_measured_force_reproduces_the_monolithic_solution",
    },
    "core/sysid/test_interface_estimation.py": {
        "test_kalman_beats_inverse_dynamics_and_projection_on_the_force",
        "test_kalman_quality_depends_on_q",
    },
    "test_architecture.py": {
        "test_no_module_outside_a_family_names_a_family",
    },
    "test_plugins.py": {
        "test_a_broken_plugin_is_named_with_its_error_and_the_rest_still_work",
        "test_rths_check_reports_the_family_and_the_parameter_count",
    },
    "analysis/test_analysis_gait.py": {
        "test_grf_through_the_vpp_has_its_own_metrics",
    },
    "analysis/test_reference_cli.py": {
        "test_reference_follows_the_overrides_and_the_duration",
    },
    "core/platform/test_geometry_report.py": {
        "test_segment_distance_against_sampling",
    },
}
for _rel, _names in SLOW_BY_CPU.items():
    if SLOW.get(_rel, set()) is not ALL:
        SLOW[_rel] = ALL if _names is ALL else set(SLOW.get(_rel, set())) | _names


def pytest_configure(config):
    # the runs shared between tests (test/shared_runs.py): one directory per session, inherited by its xdist workers
    # (scripts/run_tests.sh gives all its tiers one)
    if not os.environ.get("RTHS_SHARED_RUNS") and "PYTEST_XDIST_WORKER" not in os.environ:
        import tempfile
        os.environ["RTHS_SHARED_RUNS"] = tempfile.mkdtemp(prefix="rths-shared-runs-")
        config._rths_shared_runs = os.environ["RTHS_SHARED_RUNS"]
    config.addinivalue_line("markers", "graph: starts a ROS graph or ros2 launch")
    config.addinivalue_line("markers", "launch: runs `ros2 launch`")
    config.addinivalue_line("markers", "serial: measures time or runs in realtime; runs alone in `make test`")
    config.addinivalue_line("markers", "slow: a long unit test, left out of `make test-quick`")
    config.addinivalue_line("markers", "extended: a long run CI covers in kind; `make test-all` only")
    config.addinivalue_line("markers", "model_graph: a model's numbers through the graph; the second ROS 2 "
                            "distribution runs it in `make test-all` only")


def pytest_unconfigure(config):
    made = getattr(config, "_rths_shared_runs", None)
    if made and not os.environ.get("RTHS_KEEP_SHARED_RUNS"):
        import shutil
        shutil.rmtree(made, ignore_errors=True)


def _listed(table: dict, rel: str, name: str) -> bool:
    if rel not in table:
        return False
    names = table[rel]
    return names is ALL or name in names or name.split("[")[0] in names


def pytest_collection_modifyitems(config, items):
    here = Path(__file__).resolve().parent
    for item in items:
        try:
            rel = Path(str(item.fspath)).resolve().relative_to(here).as_posix()
        except ValueError:
            continue
        top = rel.split("/")[0]
        if top in ("graph", "launch") or rel in GRAPH_MODULES:
            item.add_marker(pytest.mark.graph)
        if top == "launch":
            item.add_marker(pytest.mark.launch)
        if rel in MODEL_GRAPH_MODULES:
            item.add_marker(pytest.mark.model_graph)
        if _listed(SERIAL, rel, item.name):
            item.add_marker(pytest.mark.serial)
        if _listed(SLOW, rel, item.name):
            item.add_marker(pytest.mark.slow)
        if _listed(EXTENDED, rel, item.name):
            item.add_marker(pytest.mark.extended)
    # the long modules first (ros2 launch, then the other graphs, then the slow unit modules): the parallel tier
    # hands out whole modules in this order (scripts/run_tests.sh: --no-loadscope-reorder), so the short unit
    # modules fill the gaps at the end instead of a launch test running alone
    items.sort(key=lambda it: 0 if it.get_closest_marker("launch") else 1 if it.get_closest_marker("graph")
               else 2 if it.get_closest_marker("slow") else 3)


# -- CPU time per test ------------------------------------------------------------------------------------------
# RTHS_TEST_CPU_LOG=FILE appends one JSON line per test: its wall time and the CPU time it used (this process and
# every child process it waited for: a node graph's processes included).  Unlike pytest's --durations, the CPU time
# does not grow when tests share a loaded machine, so it is what `scripts/test_cpu_report.py` ranks the suite by.
_CPU_LOG = os.environ.get("RTHS_TEST_CPU_LOG")


def _cpu_s() -> float:
    import resource
    a, b = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return a.ru_utime + a.ru_stime + b.ru_utime + b.ru_stime


if _CPU_LOG:
    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(item, nextitem):
        import json
        import time
        c0, w0 = _cpu_s(), time.monotonic()
        yield
        line = json.dumps({"test": item.nodeid, "cpu_s": round(_cpu_s() - c0, 3),
                           "wall_s": round(time.monotonic() - w0, 3),
                           "marks": sorted({m.name for m in item.iter_markers()} & {"graph", "launch", "serial", "slow",
                                                                                       "extended"})})
        with open(_CPU_LOG, "a") as f:
            f.write(line + "\n")


# -- the first attempt of a test that passed on its rerun ----------------------------------------------------------
# pytest-rerunfailures reports only a rerun test's final result; a second chance that hides a real fault is found
# from the first attempt's error, so the end of the run prints it (the last lines of each, on the controller of an
# xdist run too: the workers' reports reach it through the same hook)
_RERUN_TAIL_LINES = 40


def pytest_runtest_logreport(report):
    if getattr(report, "outcome", "") == "rerun" and report.longrepr is not None:
        _first_attempts.append((report.nodeid, report.when, str(report.longrepr)))


_first_attempts: list[tuple[str, str, str]] = []


def pytest_terminal_summary(terminalreporter):
    if not _first_attempts:
        return
    terminalreporter.section("first attempts of rerun tests", sep="=")
    for nodeid, when, text in _first_attempts:
        lines = text.splitlines()
        terminalreporter.write_line(f"--- {nodeid} ({when}): {len(lines)} lines of error, the last "
                                    f"{min(len(lines), _RERUN_TAIL_LINES)}:")
        for line in lines[-_RERUN_TAIL_LINES:]:
            terminalreporter.write_line(line)
