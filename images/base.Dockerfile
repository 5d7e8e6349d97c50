# The base image every bugforge environment builds on: Python in a venv at /opt/venv, git, patch and
# bash, an empty /testbed for the repository, and a non-root user for agent sessions.
# BASE is a registry image that has Python (python:3.11-slim), or a plain Debian root file system made
# by `bugforge images bootstrap`; Python then comes from the distribution's packages.
ARG BASE=python:3.11-slim
FROM ${BASE}
ENV DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8 LC_ALL=C.UTF-8 PIP_DISABLE_PIP_VERSION_CHECK=1
# Extra CA certificates (the host's bundle by default) appended to the system bundle, so pip and git
# work behind TLS-intercepting proxies. An empty file adds nothing.
COPY ca-bundle.crt /etc/bugforge/ca-bundle.crt
RUN set -e; \
    pkgs="git patch bash ca-certificates procps"; \
    command -v python3 >/dev/null || pkgs="$pkgs python3 python3-venv python3-pip"; \
    apt-get update -q; apt-get install -y -q --no-install-recommends $pkgs; \
    rm -rf /var/lib/apt/lists/*; \
    cat /etc/bugforge/ca-bundle.crt >> /etc/ssl/certs/ca-certificates.crt
ENV PIP_CERT=/etc/ssl/certs/ca-certificates.crt SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt \
    REQUESTS_CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt GIT_SSL_CAINFO=/etc/ssl/certs/ca-certificates.crt
RUN python3 -m venv /opt/venv && /opt/venv/bin/pip install -q pytest coverage
ENV VIRTUAL_ENV=/opt/venv PATH=/opt/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
RUN git config --system user.email bugforge@localhost && git config --system user.name bugforge \
    && git config --system --add safe.directory '*' && git config --system init.defaultBranch main \
    && useradd --create-home --uid 1000 agent && mkdir /testbed
WORKDIR /testbed
