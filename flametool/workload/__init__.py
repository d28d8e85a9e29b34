"""The workload: what is measured. The case protocol and how a case is found (cases); the built-in cases, one
row each (builtins), their factories (libraries: numpy, torch, cupy, jax; floors), the operands they read
(inputs); the ops, one row each with each library's function (ops); the operand values every library gets
(values); workloads, a step written once against the array API and made into a case per library (workloads),
and the built-in ones (builtin_workloads)."""
