package org.rollout.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.rollout.workflows.demo.StepReport;

class PythonTrainerProcessTest {

    @Test
    void aStepLineOfThePythonTrainerBecomesAReport() {
        StepReport r = PythonTrainerProcess.parse(
                "step 3/40  batch 2  26 groups  v3 reward 0.100 tokens 1605 clip 0.105 |g| 0.0367 stale 0 1781 ms",
                Path.of("/w"));
        assertThat(r).isNotNull();
        assertThat(r.version()).isEqualTo(3);
        assertThat(r.batchId()).isEqualTo(2);
        assertThat(r.groups()).isEqualTo(26);
        assertThat(r.meanReward()).isEqualTo(0.100);
        assertThat(r.tokens()).isEqualTo(1605);
        assertThat(r.clipFraction()).isEqualTo(0.105);
        assertThat(r.trainTime().toMillis()).isEqualTo(1781);
        assertThat(r.weightsPath()).isEqualTo(Path.of("/w/v3.rlm"));
    }

    @Test
    void otherLinesAreNotReports() {
        assertThat(PythonTrainerProcess.parse("trainer: 40 steps against [...]", Path.of("/w")))
                .isNull();
        assertThat(PythonTrainerProcess.parse("done: 40 steps; mean reward: first 5 steps 0.1", Path.of("/w")))
                .isNull();
    }

    @Test
    void theScriptIsFoundUnderRolloutHome() {
        assertThat(PythonTrainerProcess.script().toString()).endsWith(PythonTrainerProcess.SCRIPT);
    }

    private static final Path VENV = Path.of("/home/u/venv/bin");
    private static final Path USR_BIN = Path.of("/usr/bin");

    @Test
    void theConfiguredExecutableComesFirst() {
        PythonTrainerProcess.Interpreter i =
                PythonTrainerProcess.choose("/opt/py/bin/python", "/env/python", List.of(VENV), p -> true, p -> true);
        assertThat(i.executable()).isEqualTo("/opt/py/bin/python");
        assertThat(i.why()).isEqualTo("rollout.python.executable");
    }

    @Test
    void thePython3OnPathThatImportsTheClientIsChosenOverTheSystemOne() {
        PythonTrainerProcess.Interpreter i = PythonTrainerProcess.choose(
                null, null, List.of(Path.of("/nowhere"), VENV, USR_BIN), p -> !p.startsWith("/nowhere"), p -> true);
        assertThat(i.executable()).isEqualTo(VENV.resolve("python3").toString());
        assertThat(i.toString()).contains("the python3 on PATH", "rollout_client");
    }

    @Test
    void aPython3OnPathThatCannotImportTheClientGivesWayToTheSystemOneSayingWhy() {
        PythonTrainerProcess.Interpreter i =
                PythonTrainerProcess.choose(null, null, List.of(VENV, USR_BIN), p -> true, p -> !p.startsWith(VENV));
        assertThat(i.executable()).isEqualTo("/usr/bin/python3");
        assertThat(i.why()).contains(VENV.resolve("python3").toString(), "cannot import rollout_client");
    }

    @Test
    void withoutPython3OnPathTheSystemOneIsUsed() {
        PythonTrainerProcess.Interpreter i = PythonTrainerProcess.choose(
                null, null, List.of(), p -> p.equals(PythonTrainerProcess.SYSTEM_PYTHON), p -> true);
        assertThat(i.executable()).isEqualTo("/usr/bin/python3");
        assertThat(i.why()).contains("no python3 on PATH");
    }

    @Test
    void rolloutPythonInTheEnvironmentComesBeforePath() {
        PythonTrainerProcess.Interpreter i =
                PythonTrainerProcess.choose(null, "/env/python", List.of(VENV), p -> true, p -> true);
        assertThat(i.executable()).isEqualTo("/env/python");
        assertThat(i.why()).isEqualTo("$ROLLOUT_PYTHON");
    }

    @Test
    void theRealProbeRefusesAPythonThatDoesNotRun() {
        assertThat(PythonTrainerProcess.importsClient(Path.of("/no/such/python3")))
                .isFalse();
    }
}
