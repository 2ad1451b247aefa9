# The k3deploy CLI image: `docker run IMAGE smoke --endpoint URL -p PROFILE` (the smoke Job runs it).
# Multi-arch: nothing below depends on the build platform; build with
#   docker buildx build --platform linux/arm64,linux/amd64 -t REPO/k3deploy:TAG .
# The base is pinned by tag and by the digest of its multi-arch index.
ARG PYTHON_IMAGE=python:3.12.12-slim-bookworm@sha256:593bd06efe90efa80dc4eee3948be7c0fde4134606dd40d8dd8dbcade98e669c

FROM ${PYTHON_IMAGE} AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY k3deploy ./k3deploy
COPY templates ./templates
# A pure-Python wheel: the templates are packed inside it as k3deploy/_templates.
RUN pip wheel --no-cache-dir --no-deps --wheel-dir /dist .

FROM ${PYTHON_IMAGE}
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
COPY --from=build /dist /tmp/dist
RUN pip install --no-cache-dir /tmp/dist/*.whl \
    && rm -rf /tmp/dist \
    && groupadd --system --gid 10001 k3deploy \
    && useradd --system --uid 10001 --gid 10001 --home-dir /home/k3deploy --create-home --shell /usr/sbin/nologin k3deploy
USER 10001:10001
WORKDIR /home/k3deploy
ENTRYPOINT ["k3deploy"]
CMD ["--help"]
