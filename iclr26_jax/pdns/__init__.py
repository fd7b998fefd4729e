"""PDNS: Proximal Diffusion Neural Sampler (Guo, Choi, Zhu, Tao, Chen; ICLR 2026).

Reference PyTorch code: github.com/AlexandreGUO2001/PDNS. Spec: ``shared/specs/pdns.md``.

Modules: ``references`` (OU / Brownian references, bridges, terminal scores), ``continuous``
(controlled SDE, EM rollout with the Girsanov log-ratio, bridge-matching loss, analytic GMM
control, ``ContinuousSampler``), ``proximal`` (stage targets, weights, adaptive step size, the
stage loop), ``targets`` (Gaussian and Gaussian-mixture targets with exact log Z and samples),
``discrete`` (masked-diffusion CTMC with random-order unmasking, the token-choice log-ratio,
the lambda- / m-form WDCE, ``DiscreteSampler``), ``discrete_targets`` (enumerable Ising, Potts
and random-table targets with exact log Z, marginals and conditionals).
"""
