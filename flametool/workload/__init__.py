"""The workload: what is measured. The case protocol and the built-in cases (cases), the ops and their shapes
(ops), the operand values every library gets (values)."""
