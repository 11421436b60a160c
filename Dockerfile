# syntax=docker/dockerfile:1
# papara-py in a container: the wheel built from this repository, installed with its dependencies,
# and numba's kernels compiled at build time (`papara-py warm-up`), so that the first run starts at
# once. The kernels are compiled for the build machine's CPU: on another CPU the first run compiles
# them again (and says so). .ci/container runs this file's RUN steps in a fresh virtual environment.
#
#   docker build -t papara-py .                                   CPU only
#   docker build --build-arg EXTRAS=gpu -t papara-py:gpu .        with pyopencl (needs the host's
#                                                                 OpenCL driver at run time)
#   docker run --rm -v "$PWD:/data" papara-py -t tree.nwk -s ref.phy -r reads.fa -o run.h5
ARG PYTHON_VERSION=3.12

FROM python:${PYTHON_VERSION}-slim AS wheel
WORKDIR /src
COPY . .
RUN pip wheel --no-cache-dir --no-deps --wheel-dir /dist .

FROM python:${PYTHON_VERSION}-slim
ARG EXTRAS=""
LABEL org.opencontainers.image.title="papara-py" \
      org.opencontainers.image.description="Phylogeny-aware short-read alignment (PaPaRa)" \
      org.opencontainers.image.licenses="GPL-3.0-or-later" \
      org.opencontainers.image.source="https://github.com/papara-py/papara-py"
COPY --from=wheel /dist /dist
RUN pip install --no-cache-dir "$(ls /dist/papara_py-*.whl)${EXTRAS:+[$EXTRAS]}" && rm -rf /dist
RUN papara-py warm-up && papara-py --version
WORKDIR /data
ENTRYPOINT ["papara-py"]
CMD ["--help"]
