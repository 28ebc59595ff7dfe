"""Speed only, never a score: CPU matmul choice (`cpu_matmul`), T5 cross-attention shared across
beams (`t5_shared_cross`) and the FLOP meter (`flops`)."""
