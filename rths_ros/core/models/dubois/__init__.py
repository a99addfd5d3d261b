"""The substructured damper rig of du Bois et al. 2010, ROS-free.

* :mod:`.params` - every parameter (SI units) and the choices behind the defaults;
* :mod:`.modal` - the 2-DOF numerical substructure as modal transfer functions, RK4 (§4.1);
* :mod:`.damper` - the hydraulic orifice damper with poppet loop and the linear Maxwell damper (§4.2-4.3);
* :mod:`.hybrid` - the hybrid system model, eq. (24), and its poles (§4.3);
* :mod:`.actuator` - the transfer system as process models of :mod:`rths_ros.core.methods.tdc`;
* :mod:`.rig` - the open-loop plant for qualification and the substructured test point (§3.2, §4.4-4.5).
"""
from rths_ros.core.models.dubois.actuator import Actuator, StreamingProcessModel, servo_models
from rths_ros.core.models.dubois.damper import HydraulicDamper, MaxwellDamper, maxwell_from_hydraulic, orifice_flow
from rths_ros.core.models.dubois.hybrid import HybridModel, Pole
from rths_ros.core.models.dubois.modal import ModalSubstructure, chain_matrices
from rths_ros.core.models.dubois.params import (
    ActuatorParams,
    ChainParams,
    HydraulicDamperParams,
    MaxwellParams,
    RigParams,
)
from rths_ros.core.models.dubois.rig import (
    IDENTITY,
    SPECIMENS,
    RunRecord,
    open_loop_plant,
    prediction_model,
    run_substructured,
    shift_sinusoid,
    specimen_params,
)

__all__ = ["Actuator", "StreamingProcessModel", "servo_models", "HydraulicDamper", "MaxwellDamper",
           "maxwell_from_hydraulic", "orifice_flow", "HybridModel", "Pole", "ModalSubstructure", "chain_matrices",
           "ActuatorParams", "ChainParams", "HydraulicDamperParams", "MaxwellParams", "RigParams", "IDENTITY",
           "SPECIMENS", "RunRecord", "open_loop_plant", "prediction_model", "run_substructured", "shift_sinusoid",
           "specimen_params"]
