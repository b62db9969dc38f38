# meshscaler's image: the controller, built from this repository with Debian's -dev
# packages and run on debian:bookworm-slim with only the runtime libraries, as a fixed
# non-root user. The entrypoint is the binary itself (exec form): nothing at run time
# needs a shell.
#
#   docker build --build-arg VERSION=0.1.0 --build-arg REVISION=$(git rev-parse HEAD) -t meshscaler:0.1.0 .
#
# No `# syntax=` line: it would make BuildKit pull a frontend image from a registry.
FROM debian:bookworm-slim AS build
RUN apt-get update -q \
    && apt-get install -y -q --no-install-recommends gcc libc6-dev cmake ninja-build pkg-config \
       libcurl4-openssl-dev libcjson-dev libyaml-dev libwebsockets-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY CMakeLists.txt ./
COPY include include
COPY src src
COPY cmd cmd
RUN cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF \
    && ninja -C build meshscaler \
    && strip build/meshscaler \
    && build/meshscaler version

FROM debian:bookworm-slim
ARG VERSION=0.1.0
ARG REVISION=unknown
ARG SOURCE=unknown
LABEL org.opencontainers.image.title="meshscaler" \
      org.opencontainers.image.description="Kubernetes autoscaler for meshed services: scales on sidecar concurrency, sidecar CPU, rejections and load-balancer limits" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.source="${SOURCE}"
# ca-certificates: Prometheus behind TLS with a public CA. The API server's CA comes
# from the ServiceAccount mount.
RUN apt-get update -q \
    && apt-get install -y -q --no-install-recommends libcurl4 libcjson1 libyaml-0-2 libwebsockets17 ca-certificates \
    && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/log/*.log /usr/share/doc/* /usr/share/man/*
COPY --from=build /src/build/meshscaler /usr/bin/meshscaler
# 65532: the "nonroot" UID of distroless images, which operators' policies expect.
USER 65532:65532
EXPOSE 8080 8081
ENTRYPOINT ["/usr/bin/meshscaler"]
CMD ["controller"]
