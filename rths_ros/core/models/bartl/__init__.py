"""Digital twins of the two physical experiments of Bartl 2019 (ch. 6): two cantilever beams coupled through a
2-DOF interface (:mod:`.beams`) and the cubic-spring rig with a linear motor (:mod:`.cubic_spring`, loop in
:mod:`.loop`).  ROS-free; docs/bartl_rigs.md describes the models and the choices."""
