# Stand-in for the apache/kafka image, for machines that reach no image registry (built by
# docker/standins.py under that name and tag) on the python stand-in, whose Debian bookworm it
# shares (one bootstrap for both; the broker does not use its Python): OpenJDK 17 and the
# release's jars from Maven Central (libs/), laid out as the official image (/opt/kafka,
# /etc/kafka/docker, its volumes, user appuser) and started as it is: Kafka's own
# kafka.docker.KafkaDockerWrapper turns the KAFKA_* variables into server.properties and formats
# the storage (kafka/run).
FROM python:3.11-slim

RUN apt-get update \
    && apt-get install -y --no-install-recommends openjdk-17-jre-headless \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --create-home --shell /bin/bash appuser \
    && mkdir -p /opt/kafka/bin /opt/kafka/config /etc/kafka/docker /etc/kafka/secrets \
        /var/lib/kafka/data /mnt/shared/config \
    && chown -R appuser /opt/kafka /etc/kafka /var/lib/kafka /mnt/shared/config
COPY libs/ /opt/kafka/libs/
COPY kafka/server.properties kafka/log4j2.yaml kafka/tools-log4j2.yaml kafka/run /etc/kafka/docker/
COPY kafka/kafka-tool /opt/kafka/bin/
RUN ln -s kafka-tool /opt/kafka/bin/kafka-broker-api-versions.sh \
    && ln -s kafka-tool /opt/kafka/bin/kafka-topics.sh

USER appuser
VOLUME ["/etc/kafka/secrets", "/var/lib/kafka/data", "/mnt/shared/config"]
EXPOSE 9092
CMD ["/etc/kafka/docker/run"]
