import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.common.utils.Exit;

import java.io.BufferedReader;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Runs Kafka's command-line tools (their main classes, with Kafka's jars) one after another in one JVM,
 * as Kafka's own tool tests do (ToolsTestUtils: Exit's procedures replaced, System.out captured), so a
 * test pays the JVM start once. compat/tool_compare.py drives it.
 *
 * Requests on stdin, one JSON object a line: {"main": class, "args": [...], "stdin": text or null}.
 * Answers on stdout, one a line: {"exit": status, "stdout": text, "stderr": text}. A tool's
 * Exit.exit(status) ends the invocation with that status; returning from main is status 0. Then the
 * shutdown hooks the tool registered through Exit run, as they would when its JVM exits (the console
 * producer closes, and so flushes, its producer in one).
 */
public final class ToolSession {
    private static final class ExitCalled extends RuntimeException {
        final int status;

        ExitCalled(int status) {
            super("Exit.exit(" + status + ")", null, false, false);
            this.status = status;
        }
    }

    private static final PrintStream DISCARD = new PrintStream(OutputStream.nullOutputStream());

    public static void main(String[] ignored) throws Exception {
        ObjectMapper json = new ObjectMapper();
        PrintStream protocol = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), true,
                StandardCharsets.UTF_8);
        PrintStream realErr = System.err;
        InputStream realIn = System.in;
        BufferedReader requests = new BufferedReader(new InputStreamReader(realIn, StandardCharsets.UTF_8));
        // The first Exit.exit of an invocation ends it, as System.exit ends a process: its status is the
        // invocation's, and what the tool's own catch blocks would print after it goes nowhere.
        AtomicReference<Integer> exited = new AtomicReference<>();
        Exit.Procedure exit = (status, message) -> {
            if (exited.compareAndSet(null, status)) {
                System.setOut(DISCARD);
                System.setErr(DISCARD);
            }
            throw new ExitCalled(status);
        };
        Exit.setExitProcedure(exit);
        Exit.setHaltProcedure(exit);
        List<Runnable> hooks = new ArrayList<>();
        Exit.setShutdownHookAdder((name, hook) -> {
            synchronized (hooks) {
                hooks.add(hook);
            }
        });
        protocol.println("{\"ready\": true}");
        String line;
        while ((line = requests.readLine()) != null) {
            if (line.isBlank()) continue;
            JsonNode request = json.readTree(line);
            String[] args = new String[request.get("args").size()];
            for (int i = 0; i < args.length; i++) args[i] = request.get("args").get(i).asText();
            JsonNode stdin = request.get("stdin");
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            ByteArrayOutputStream err = new ByteArrayOutputStream();
            System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
            System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
            System.setIn(new ByteArrayInputStream(stdin == null || stdin.isNull() ? new byte[0]
                    : stdin.asText().getBytes(StandardCharsets.UTF_8)));
            int status = 0;
            exited.set(null);
            long started = System.nanoTime();
            try {
                Method main = Class.forName(request.get("main").asText()).getMethod("main", String[].class);
                main.invoke(null, (Object) args);
            } catch (InvocationTargetException e) {
                Throwable cause = e.getCause();
                if (!(cause instanceof ExitCalled)) {
                    cause.printStackTrace(System.err);
                    status = 1;  // what the JVM does with an exception thrown out of main
                }
            } catch (Throwable e) {
                e.printStackTrace(System.err);
                status = 1;
            } finally {
                if (exited.get() != null) status = exited.get();
                System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
                System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
                runShutdownHooks(hooks);
                System.out.flush();
                System.err.flush();
                System.setOut(protocol);
                System.setErr(realErr);
                System.setIn(realIn);
            }
            ObjectNode answer = json.createObjectNode();
            answer.put("exit", status);
            answer.put("millis", (System.nanoTime() - started) / 1_000_000);
            answer.put("stdout", out.toString(StandardCharsets.UTF_8));
            answer.put("stderr", err.toString(StandardCharsets.UTF_8));
            protocol.println(json.writeValueAsString(answer));
        }
        Runtime.getRuntime().halt(0);  // threads a tool left behind do not keep the session alive
    }

    /** The hooks an invocation registered, each in a thread of its own as the JVM runs them; waits for them. */
    private static void runShutdownHooks(List<Runnable> hooks) {
        List<Thread> threads = new ArrayList<>();
        synchronized (hooks) {
            for (Runnable hook : hooks) {
                Thread thread = new Thread(() -> {
                    try {
                        hook.run();
                    } catch (ExitCalled ignored) {
                        // a hook calling Exit.exit: the JVM would be exiting already
                    }
                });
                thread.start();
                threads.add(thread);
            }
            hooks.clear();
        }
        for (Thread thread : threads) {
            try {
                thread.join(60_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
