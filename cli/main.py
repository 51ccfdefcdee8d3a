"""``odradek``: the root command and the options every cluster command shares.

Cluster commands take ``-b/--bootstrap-server HOST:PORT[,HOST:PORT...]`` (default: the
``ODRADEK_BOOTSTRAP_SERVER`` environment variable, else ``127.0.0.1:9092``, where ``make serve``
listens) and ``--timeout`` (seconds an operation keeps retrying). A Kafka error ends the command
with exit status 1 and ``odradek: <what>: <ERROR_NAME> (<message>)`` on stderr; bad usage exits
with status 2, as click does.
"""

from __future__ import annotations

import sys

import click


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="odradek", prog_name="odradek")
def odradek() -> None:
    """Odradek, a Kafka-compatible broker, and the tool to run any Kafka cluster.

    \b
    odradek serve                     run a broker
    odradek topic list                topics, partitions, produce and consume
    odradek group lag GROUP           consumer groups, lag, offset resets
    odradek config describe --broker 0   broker, topic and logger configs
    odradek cluster describe          brokers and the controller
    odradek log-dirs                  log directories and their partitions
    odradek leader-election           preferred or unclean leader elections
    odradek reassign list             move partitions between brokers
    odradek acl / user / quota        ACLs, SCRAM users, client quotas
    odradek token create              delegation tokens
    odradek transaction list          transactions and producers
    odradek dump-log / check-log      read segment files offline
    """


def _register() -> None:
    from cli.commands import (
        acl,
        cluster,
        config,
        group,
        leader_election,
        local,
        log_dirs,
        quota,
        reassign,
        token,
        topic,
        transaction,
        user,
    )

    odradek.add_command(topic.topic)
    odradek.add_command(group.group)
    odradek.add_command(cluster.cluster)
    odradek.add_command(config.config)
    odradek.add_command(log_dirs.log_dirs)
    odradek.add_command(leader_election.leader_election)
    odradek.add_command(reassign.reassign)
    odradek.add_command(acl.acl)
    odradek.add_command(user.user)
    odradek.add_command(quota.quota)
    odradek.add_command(token.token)
    odradek.add_command(transaction.transaction)
    for command in local.COMMANDS:
        odradek.add_command(command)


_register()


def main(argv: list[str] | None = None) -> int:
    try:
        result = odradek.main(args=argv, prog_name="odradek", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        return 1
    except click.ClickException as e:
        e.show()
        return e.exit_code
    except click.exceptions.Exit as e:
        return int(e.exit_code)
    except BrokenPipeError:
        # a reader such as `head` went away: not an error of ours
        sys.stderr.close()
        return 0
    return int(result) if isinstance(result, int) else 0


if __name__ == "__main__":
    sys.exit(main())
