# rockmq in a container (deploy/kubernetes/README.md). Two stages: the first compiles the data path
# (src/rockmq/compiled.py, Cython) into a wheel, the second installs that wheel alone into a slim
# image, without a compiler. The same image runs a broker (the default command) or a name server
# (`rockmq namesrv --host 0.0.0.0`).
#   docker build -t rockmq .
#   docker run -p 8081:8081 -p 8080:8080 -v rockmq-data:/var/lib/rockmq rockmq
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS builder
# gcc and the C library's headers for Cython's output; the image carries Python's own headers.
RUN apt-get update \
    && apt-get install -y --no-install-recommends gcc libc6-dev \
    && rm -rf /var/lib/apt/lists/*
RUN pip install --no-cache-dir build==1.6.1
WORKDIR /src
COPY pyproject.toml setup.py README.md ./
COPY src ./src
# The wheel must carry every compiled module: a build that fell back to Python fails here, not in production.
RUN python -m build --wheel --outdir /wheels \
    && python -c "import json, sys, zipfile; from pathlib import Path; \
whl = zipfile.ZipFile(next(Path('/wheels').glob('rockmq-*.whl'))); \
built = json.loads(whl.read('rockmq/_compiled.json')); \
sys.exit(None if 'modules' in built and sum(n.endswith('.so') for n in whl.namelist()) == len(built['modules']) \
         else f'the wheel carries no compiled data path: {built}')"

FROM ${PYTHON_IMAGE}
COPY --from=builder /wheels /wheels
RUN pip install --no-cache-dir /wheels/rockmq-*.whl \
    && rm -rf /wheels \
    && groupadd --system --gid 10001 rockmq \
    && useradd --system --uid 10001 --gid rockmq --home-dir /var/lib/rockmq --no-create-home rockmq \
    && mkdir -p /var/lib/rockmq \
    && chown rockmq:rockmq /var/lib/rockmq
# Settings come as ROCKMQ_* variables (config.py) or flags; the data lives in the volume.
ENV ROCKMQ_DATA_DIR=/var/lib/rockmq \
    PYTHONUNBUFFERED=1
VOLUME ["/var/lib/rockmq"]
WORKDIR /var/lib/rockmq
USER 10001:10001
# 8081: the broker's gRPC port; 8080: its HTTP port (/metrics, /healthz, /readyz); 9876: a name server's.
EXPOSE 8081 8080 9876
ENTRYPOINT ["rockmq"]
CMD ["serve", "--host", "0.0.0.0", "--http-port", "8080"]
