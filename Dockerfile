# syntax=docker/dockerfile:1
# py-volcano scheduler image. Build: hack/build-image.sh (Docker where a daemon runs, buildah otherwise).
# BASE_IMAGE is any image with python3 (3.11 or later) and its venv module: python:3.11-slim by default,
# or the Debian bookworm rootfs hack/build-image.sh makes with mmdebstrap where no registry serves one.
ARG BASE_IMAGE=python:3.11-slim

# Builder: a virtualenv with the dependencies, from wheels only (no compiler runs), then the project.
FROM ${BASE_IMAGE} AS builder
# The CA bundle pip trusts, when PyPI is reached through a TLS-intercepting proxy (hack/build-image.sh
# mounts the build host's); empty: pip's own.
ARG PIP_CERT=
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
# The dependencies come from the lock alone (pinned, every file's sha256 checked: hack/lock.sh), so that
# a change of code reuses this layer.
COPY requirements.lock ./
RUN python3 -m venv /opt/py-volcano \
 && /opt/py-volcano/bin/pip install ${PIP_CERT:+--cert "$PIP_CERT"} --only-binary=:all: --require-hashes \
      --requirement requirements.lock \
 && site=$(/opt/py-volcano/bin/python -c "import sysconfig; print(sysconfig.get_path('purelib'))") \
 && rm -r "$site/kubernetes/aio" \
 && find "$site/numpy" -type d -name tests -prune -exec rm -r {} +
# Above: kubernetes' asyncio client (70 MB with its bytecode) is never imported (py-volcano reads
# kubeconfigs with kubernetes.config and talks to the API server through aiohttp), nor are NumPy's tests.
# .dockerignore admits only pyproject.toml, README.md, LICENSE and py_volcano/.
COPY . .
RUN /opt/py-volcano/bin/pip install --no-deps --no-build-isolation . \
 && /opt/py-volcano/bin/pip uninstall --yes pip setuptools

# Runtime: the builder's virtualenv on the same base, run as an unprivileged user. Nothing is written
# at run time (bytecode was compiled at install), so the root filesystem can be read-only.
FROM ${BASE_IMAGE}
ENV PATH=/opt/py-volcano/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
RUN echo "nonroot:x:65532:65532:nonroot:/nonexistent:/usr/sbin/nologin" >> /etc/passwd \
 && echo "nonroot:x:65532:" >> /etc/group
COPY --from=builder /opt/py-volcano /opt/py-volcano
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["py-volcano", "run"]
