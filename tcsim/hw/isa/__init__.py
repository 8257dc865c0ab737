"""The instruction families on the GPU, one module per family as in `tcsim.isa`: ``mma``
(mma.sync), ``wmma`` and ``wgmma`` run the instruction with the model's signatures;
``<family>_probes`` writes the CUDA probes they launch (generated, `tcsim.hw.generate`)."""
