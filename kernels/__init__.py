"""OpenCL C sources of the GPU kernels, installed as the package data `papara_py.kernels`."""
