"""PDNS: Proximal Diffusion Neural Sampler (Guo, Choi, Zhu, Tao, Chen; ICLR 2026).

Reference PyTorch code: github.com/AlexandreGUO2001/PDNS. Spec: ``shared/specs/pdns.md``.

Modules: ``references`` (OU / Brownian references, bridges, terminal scores), ``continuous``
(controlled SDE, EM rollout with the Girsanov log-ratio, bridge-matching loss, analytic GMM
control, ``ContinuousSampler``), ``proximal`` (stage targets, weights, adaptive step size, the
stage loop), ``targets`` (Gaussian mixtures incl. GMM-40 and unequal-weight two-mode targets,
MoS, Funnel, Many-Well MW54, with exact log Z, samples and mode assignment), ``particles``
(DW-4, LJ-13/55 energies, centre-of-mass-free noise), ``discrete`` (masked-diffusion CTMC with
random-order unmasking, the token-choice log-ratio, the lambda- / m-form WDCE,
``DiscreteSampler``), ``discrete_targets`` (enumerable Ising, Potts and random-table targets with
exact log Z, marginals and conditionals; streamed exact lattice statistics; Ising row transfer
matrix), ``metrics`` (log Z^, ELBO, ESS, Sinkhorn, MMD, 1-D / energy W2, mode weights, lattice
magnetisation / correlation errors, TV).
"""
