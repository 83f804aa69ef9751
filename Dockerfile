# syntax=docker/dockerfile:1
# py-volcano scheduler image. Build: docker build -t py-volcano:0.1.0 .
ARG PYTHON_IMAGE=python:3.11-slim

# Builder: wheels of the project and of every dependency.
FROM ${PYTHON_IMAGE} AS builder
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
# .dockerignore admits only pyproject.toml, README.md, LICENSE and py_volcano/.
COPY . .
RUN pip wheel --wheel-dir /wheels .

# Runtime: the wheels installed into a clean slim image, run as an unprivileged user.
FROM ${PYTHON_IMAGE}
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
RUN groupadd --system --gid 65532 nonroot \
 && useradd --system --uid 65532 --gid 65532 --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin nonroot
RUN --mount=type=bind,from=builder,source=/wheels,target=/wheels \
    pip install --no-index --find-links=/wheels py-volcano
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["py-volcano", "run"]
