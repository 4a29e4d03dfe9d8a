"""The NPU back end: value homes and liveness, ISA emission, sync insertion, the compile pipeline."""
