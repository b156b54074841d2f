/**
 * {@link org.rollout.testengine.ScriptedEngine}: one in-process inference engine with chosen
 * answers, shared by the modules' tests (test scope) and the benchmarks. The release tarball does
 * not ship it: the CLI does not depend on this module.
 */
package org.rollout.testengine;
