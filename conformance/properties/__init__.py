"""The property machinery: the reference and pylance side by side, and the stateful writer machine.

``worlds`` (one writer's scratch folder, read back), ``side_by_side`` (the model and the worlds, operation by
operation, with every comparison), ``machine`` (the Hypothesis state machine, and its printed programs read
back), ``export`` (a program as a regression scenario), ``command`` (replay and export from the command line).
"""
