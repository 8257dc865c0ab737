"""Memory on the GPU, as in `tcsim.memory`: ``smem_probes`` (one shared-memory instruction per
probe, for Nsight Compute's counters) and ``tma`` (the driver's tensor maps)."""
