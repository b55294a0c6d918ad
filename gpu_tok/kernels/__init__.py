"""Numba kernels (CUDA and their ``njit`` CPU twins) and the packing they need.

Empty for now: the compiled CPU engine and the GPU engine are later issues.
"""
