"""QAM: Q-learning with Adjoint Matching (Qiyang Li and Sergey Levine, ICLR 2026).

Reference implementation: github.com/ColinQiyangLi/qam (JAX). This room is an independent
implementation following ``shared/specs/qam.md``: a flow policy fine-tuned against a critic
ensemble by lean adjoint matching on the memoryless SDE of the flow, with the BC-flow and FQL
baselines on the same critic and action-chunking machinery.
"""
