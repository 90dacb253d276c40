# ork as a static binary on an empty base image.
#   docker build -t ork:0.1.0 .
#   ork generate bundle -k katalog.yaml --image ork:0.1.0 | kubectl apply -f -
FROM rust:1-bookworm AS build
RUN apt-get update && apt-get install -y --no-install-recommends musl-tools ca-certificates \
 && rustup target add x86_64-unknown-linux-musl
WORKDIR /src
COPY . .
RUN cargo build --release --locked --target x86_64-unknown-linux-musl -p ork \
 && cp target/x86_64-unknown-linux-musl/release/ork /ork

FROM scratch
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /ork /ork
# The bundle's securityContext runs it as this non-root user with a read-only root filesystem.
USER 65532:65532
ENTRYPOINT ["/ork"]
