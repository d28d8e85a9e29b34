"""The workload: what is measured. The case protocol and how a case is found (cases); the built-in cases, one
row each (builtins), their factories (libraries: numpy, torch, cupy, jax; floors), the operands they read
(inputs); the ops, one row each with each library's function (ops); the operand values every library gets
(values). A workload written once against the array API for every library would be one more
module beside these: loaded as cases.py loads a case, its arrays placed and synced per library as
libraries.py places the built-ins'."""
