"""The substrate the layer run stands on: collectives, DeepEP's dispatchers (models of its two
buffers, and the real ones), the expert runners (torch, DeepGEMM), weights, inputs and shapes.
The run itself executes the tree's block: :mod:`driftcheck.runtime_verify.block`.
"""
